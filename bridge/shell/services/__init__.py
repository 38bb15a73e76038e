"""The processes the bridge runs as: stdio, the Unix daemon and its `connect` end, and the
listening service they share."""
