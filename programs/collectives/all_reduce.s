# All-reduce of 1 MiB per rank with the built-in collective: run it on any topology, e.g.
#   neuronemu run collectives/all_reduce --topology trn3-ultraserver-gen2
# and compare the algorithms (algorithm=auto picks by size and world as the runtime does).
.hbm x float32[256, 1024] input init=normal(0, 1)
.hbm y float32[256, 1024] output
    cc.all_reduce y, x, op=add
