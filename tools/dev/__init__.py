"""What the Makefile runs for developers: the demo, the wheel check, the test servers of Milvus and the installers.
"""
