"""Datasets made here rather than downloaded: Bongard-RWR+'s generated layout, its image pool and the
variants and diverse subsets built from it, and fresh Bongard-LOGO problems from the authors'
generator with the concepts they state."""
