from bridge.oauth.challenge import Challenge, parse_challenge


def test_the_resource_metadata_and_scope_are_read_from_a_bearer_challenge():
    header = ('Bearer resource_metadata="https://mcp.example.com/.well-known/'
              'oauth-protected-resource", scope="files:read files:write"')
    assert parse_challenge(header) == Challenge(
        "https://mcp.example.com/.well-known/oauth-protected-resource",
        ("files:read", "files:write"))


def test_insufficient_scope_is_a_step_up():
    challenge = parse_challenge('Bearer error="insufficient_scope", scope="mcp:write", '
                                'resource_metadata="https://x/m"')
    assert challenge is not None and challenge.insufficient_scope
    assert challenge.scope == ("mcp:write",)


def test_the_bearer_challenge_is_found_among_others_and_names_are_case_insensitive():
    header = 'Basic realm="a, b", BEARER Scope=read, error="invalid_token"'
    assert parse_challenge(header) == Challenge(None, ("read",), "invalid_token")


def test_quoted_values_are_unescaped():
    assert parse_challenge(r'Bearer scope="a\"b"') == Challenge(None, ('a"b',))


def test_no_header_or_no_bearer_scheme_is_no_challenge():
    assert parse_challenge(None) is None
    assert parse_challenge("") is None
    assert parse_challenge('Basic realm="x"') is None


def test_a_bare_bearer_challenge_names_nothing():
    assert parse_challenge("Bearer") == Challenge()
