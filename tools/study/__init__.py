"""Studies behind the project's constants and choices (fusion, segmentation, scale); each is cited where its result is used.
"""
