"""memfold: memory planning for neural networks, from Python.

memfold.torch makes memfold's Echo (recomputation chosen over the whole joint forward and
backward graph) the partitioner of PyTorch's AOTAutograd. The C++ core is the extension
memfold._memfold.
"""
