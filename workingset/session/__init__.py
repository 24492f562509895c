"""The session: `Investigation` (one store transaction per call), its turns and calls, the replies it returns, the answer in a provider reply."""
