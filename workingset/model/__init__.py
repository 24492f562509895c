"""The model: the state and stored-context structs with their validation (`state`), content hashes, exact costs, spans and harvested identifiers."""
