"""The compiled machine model: lowered-array layout, kernel ABI, tile memory access, DMA compression."""
