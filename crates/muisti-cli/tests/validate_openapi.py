"""Validates an OpenAPI document with openapi-spec-validator; prints the version it checked."""

import json
import sys

from openapi_spec_validator import validate
from openapi_spec_validator.validation.validators import OpenAPIV31SpecValidator

with open(sys.argv[1]) as f:
    spec = json.load(f)
validate(spec, cls=OpenAPIV31SpecValidator)
print("valid", spec["openapi"])
