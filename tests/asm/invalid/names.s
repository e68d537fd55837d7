# Unknown engines, mnemonics, tiles, arguments, enum values, labels, directives, dtypes.
.hbm a float32[128, 512] input
.sbuf t float32[128, 512]
.sbuf col float32[128, 1]
#---
vectr.tensor_copy t, t                       # CHECK: 1: error: unknown engine 'vectr'; engines: cc, ctrl, dma, gpsimd, scalar, sync, tensor, vector; did you mean 'vector'?
vector.tensor_tensr t, t, t, op=add          # CHECK: 1: error: unknown instruction 'vector.tensor_tensr'; did you mean 'tensor_tensor'?
gpsimd.activation t, t, func=exp             # CHECK: 1: error: gpsimd has no instruction 'activation'; it exists as scalar.activation
vector.tensor_tensor t, t, q, op=add         # CHECK: 28: error: unknown tile 'q'
vector.tensor_tensor t, t, t, op=ad          # CHECK: 34: error: vector.tensor_tensor argument 'op' must be one of: bypass, add,
vector.tensor_tensor t, t, t, opp=add        # CHECK: 31: error: vector.tensor_tensor has no argument 'opp'; did you mean 'op'?
vector.tensor_tensor t, t, t                 # CHECK: 1: error: vector.tensor_tensor needs argument 'op'
vector.memset t, t, value=1.0                # CHECK: 18: error: vector.memset takes 1 positional argument(s) (dst); got more
scalar.activation t, t, func=expp            # CHECK: 30: error: scalar.activation argument 'func' must be one of: copy, exp,
ctrl.blt r0, 4, nowhere                      # CHECK: 17: error: unknown label 'nowhere'
ctrl.mov r99, 0                              # CHECK: 10: error: ctrl.mov argument 'rd' must be a register r0..r63
.sbuff x float32[128, 4]                     # CHECK: 2: error: unknown directive '.sbuff'
.sbuf x float33[128, 4]                      # CHECK: 9: error: unknown dtype 'float33'; did you mean 'float32'?
.sbuf t float32[128, 4]                      # CHECK: 7: error: 't' is already declared
.hbm h float32[4, 4] inputt                  # CHECK: 22: error: role must be one of input, output, scratch; did you mean 'input'?
.hbm h float32[4, 4] input init=gauss        # CHECK: 33: error: unknown initialiser 'gauss'
.target trn9                                 # CHECK: 9: error: unknown target 'trn9'
dma.copy t, a, queue=16                      # CHECK: 22: error: dma.copy argument 'queue' must be in the range [0, 15], got 16
vector.tensor_scalar t, t, op0=add, operand0=zz   # CHECK: 46: error: unknown name 'zz' in expression
.sync eventually                             # CHECK: 7: error: usage: .sync auto|explicit
sync.wait vectr, sem=0, value=1              # CHECK: 11: error: sync.wait argument 'track' must be one of: tensor, scalar, gpsimd, vector, q0
