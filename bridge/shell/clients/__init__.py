"""Client sides over file descriptors, and what a client is told when the bridge cannot run."""
