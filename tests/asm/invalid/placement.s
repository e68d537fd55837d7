# On-chip placement and aliases (at=, alias=): every illegal case.
.hbm a float32[128, 512] input
.sbuf t float32[128, 512]
.sbuf small float32[64, 16]
.psum acc float32[128, 512]
#---
.sbuf b1 float32[128, 4] where=0                # CHECK: 32: error: unknown option 'where' for .sbuf (options: at=BYTE_OFFSET, alias=BUFFER)
.sbuf b2 float32[128, 4] at=2                   # CHECK: 29: error: at= is a byte offset in every partition, a multiple of 4 (the size of one float32) and >= 0; got 2
.sbuf b3 float32[128, 4] at=-4                  # CHECK: 29: error: at= is a byte offset in every partition, a multiple of 4 (the size of one float32) and >= 0; got -4
.sbuf b4 float32[128, 64] at=1024               # CHECK: 30: error: 'b4' at bytes 1024..1279 overlaps 't' (bytes 0..2047) on bytes 1024..1279 of every partition
.sbuf b5 float32[128, 64] at=1024 * 1024 * 1024 # CHECK: 1: error: SBUF overflow on trn2: 'b5' needs 256 bytes per partition at offset 1073741824, but SBUF has 229376 bytes per partition
.sbuf b6 float32[128, 64] at=229376 - 128       # CHECK: 1: error: SBUF overflow on trn2: 'b6' needs 256 bytes per partition at offset 229248, but SBUF has 229376 bytes per partition
.psum b7 float32[128, 16] at=4064               # CHECK: 30: error: PSUM buffer 'b7' (64 bytes per partition) at 4064 straddles banks 1 and 2 (2048 bytes each); a buffer that fits in a bank lies inside one
.psum b8 float32[128, 1024] at=5120             # CHECK: 32: error: PSUM buffer 'b8' (4096 bytes per partition) is larger than a bank: it starts on a bank boundary (a multiple of 2048), not at 5120
.sbuf b9 float32[128, 4] alias=nothing          # CHECK: 32: error: alias= names an on-chip buffer declared before this line; 'nothing' is not one
.sbuf b10 float32[128, 4] alias=a               # CHECK: 33: error: alias=a: 'a' is an HBM tensor; an alias shares the bytes of an on-chip buffer (view an HBM tensor's bytes as another dtype with ap(..., DTYPE))
.psum b11 float32[128, 4] alias=t               # CHECK: 33: error: alias=t: 't' is in SBUF, this buffer in PSUM; an alias shares bytes of its own memory
.sbuf b12 float32[128, 1024] alias=t            # CHECK: 1: error: alias 'b12' covers bytes 0..4095 of each partition but 't' holds bytes 0..2047: an alias lies inside the buffer it shares
.sbuf b13 float32[128, 4] alias=small           # CHECK: 1: error: alias 'b13' spans 128 partitions but 'small' spans 64: an alias uses only the partitions of the buffer it shares
.sbuf b14 float32[64, 16] alias=small at=4096   # CHECK: 1: error: alias 'b14' covers bytes 4096..4159 of each partition but 'small' holds bytes 2048..2111: an alias lies inside the buffer it shares
.sbuf b15 float32[128, 4] alias=3               # CHECK: 33: error: alias= names an on-chip buffer declared before this line; 'an expression' is not one
.psum b16 float32[128, 512] at=0                # CHECK: 32: error: 'b16' at bytes 0..2047 overlaps 'acc' (bytes 0..2047) on bytes 0..2047 of every partition
