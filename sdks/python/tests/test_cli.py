"""The argparse surface's rules that docs/discovery.md fixes where the spec is silent."""

from __future__ import annotations

import pytest

from machinemode import AoiError
from machinemode.cli import Tool


def tool(*versions: str) -> Tool:
    return Tool("t", "1.0.0", description="d", schema_name="io.example.t.events",
                schema_versions=list(versions), schema_id="https://example.com/t/{version}.json")


class TestSchemaVersionNegotiation:
    """docs/discovery.md "Schema versions" (§5.1, §19.2)."""

    def test_no_request_is_the_default_the_first_listed(self) -> None:
        assert tool("1.2.0", "1.10.0", "2.0.0")._negotiate(None) == "1.2.0"

    def test_a_prefix_at_a_dot_selects_the_highest_it_names(self) -> None:
        t = tool("1.2.0", "1.10.0", "2.0.0")
        assert t._negotiate("1") == "1.10.0"  # numeric order, not text order
        assert t._negotiate("1.2") == "1.2.0"
        assert t._negotiate("2") == "2.0.0"
        assert t._negotiate("1.10.0") == "1.10.0"

    def test_a_leading_v_is_allowed(self) -> None:
        assert tool("1.0.0")._negotiate("v1.0") == "1.0.0"

    @pytest.mark.parametrize("asked", ["1.1", "3", "1.0.0.0", "", "1.", "10"])
    def test_anything_else_is_unsupported_with_exit_69(self, asked: str) -> None:
        with pytest.raises(AoiError) as caught:
            tool("1.0.0", "1.10.0")._negotiate(asked)
        err = caught.value
        assert (err.category, err.code, err.field, err.exit_code) == \
            ("unsupported", "SCHEMA_VERSION_UNSUPPORTED", "schema_version", 69)
        assert "1.0.0, 1.10.0" in err.message
