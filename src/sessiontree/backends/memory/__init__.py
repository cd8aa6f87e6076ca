"""In-memory backend: :mod:`~sessiontree.backends.memory.storage` (one session's entries in a
list) and :mod:`~sessiontree.backends.memory.repo` (:class:`MemoryRepo`, a dict of them)."""
