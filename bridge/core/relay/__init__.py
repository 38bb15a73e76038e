"""Mode P: the bridge is a relay on both faces (a client and a server of the same era)."""
