"""`make eval`: retrieval quality (nDCG, recall, MRR) per channel and fused, on public sets.
"""
