"""Rules of the indexing family. Indexing: gather, take, take_along_axis, index_select, scatter, scatter_add, scatter_reduce, index_put, set_value, slice_scatter, embedding, c_embedding, one_hot."""
