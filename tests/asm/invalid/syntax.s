# Syntax errors: the parser's messages name what it expected.
.sbuf t float32[128, 512]
#---
vector.tensor_tensor t t, t, op=add          # CHECK: 24: error: syntax error: unexpected 't'
vector.tensor_copy t, t$                     # CHECK: 24: error: unexpected character '$'
.sbuf u float32[128, 512                     # CHECK: 25: error: syntax error: unexpected end of line
x = 3                                        # CHECK: 3: error: syntax error: unexpected '='
