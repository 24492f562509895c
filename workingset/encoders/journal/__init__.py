"""The journal family, v11 and later: a preamble, the case, an append-only bounded journal, "This turn".

`walk`: the journal's entries, their formats (v11's; a version subclasses `Format`) and the
walk that compacts it past its room. `base`: the family's base encoder, `JournalEncoder`,
whose tail is a sequence of hooks. `v11` … `v14`: each version, subclassing the one before
and overriding only what it changes; `walk14` is v14's own walk (paged entries, every kind
archived, ranged index rows).
"""
