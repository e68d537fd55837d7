# All-reduce of 1 MiB per rank with the built-in collective, on any topology: by default the 16
# ranks of a trn2.48xlarge, or e.g. --topology trn3-ultraserver-gen2 to compare the algorithms.
.topology trn2.48xlarge  # algorithm=auto picks by size and world as the runtime does
.hbm x float32[256, 1024] input init=normal(0, 1)
.hbm y float32[256, 1024] output
    cc.all_reduce y, x, op=add
