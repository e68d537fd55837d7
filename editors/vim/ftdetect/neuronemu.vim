" A .s file that declares neuronemu tensors or tiles is neuronemu assembly.
autocmd BufRead,BufNewFile *.s if search('^\s*\.\(hbm\|sbuf\|psum\|target\)\>', 'nw') | set filetype=neuronemu | endif
