"""Schemathesis hooks of `cargo xtask schemathesis` (SCHEMATHESIS_HOOKS=hooks).

JSON Schema counts `2.0` as the integer 2, and Schemathesis sends integers so spelled; the
router's JSON readers take an integer field only as an integer (`2`), as serde does, and the
document cannot say so. Whole floats in generated bodies are therefore spelled as integers,
which changes no value: a request valid or invalid before stays so.
"""

import schemathesis

# Past this a float no longer spells its integer exactly.
_EXACT = 2**53


def _whole(value):
    if isinstance(value, float) and value.is_integer() and abs(value) < _EXACT:
        return int(value)
    if isinstance(value, dict):
        return {key: _whole(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_whole(item) for item in value]
    return value


@schemathesis.hook
def map_body(context, body):
    return _whole(body)
