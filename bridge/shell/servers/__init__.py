"""Server sides: a supervised child process, or a remote endpoint (remote/)."""
