"""The journal family, v11 and later: a preamble, the case, an append-only bounded journal, "This turn".

`walk`: the journal's entries, their formats (v11's; a version subclasses `Format`) and the
walk that compacts it past its room. `base`: the family's base encoder, `JournalEncoder`,
whose tail is a sequence of hooks. `v11`, `v12`, `v13`: each version, subclassing the one
before and overriding only what it changes.
"""
