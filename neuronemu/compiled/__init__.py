"""numba tooling: the one jit decorator, the content-keyed cache, the compile reporter."""
