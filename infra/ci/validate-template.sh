#!/usr/bin/env bash
# Validates sam-template.yaml with cfn-lint and `sam validate --lint` (for CI),
# as it is and with each choice of its ApiAuth parameter (IAM, Token).
# Installs cfn-lint and aws-sam-cli from PyPI when missing. Needs no AWS
# account: the region and credentials below are placeholders.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
template="$root/sam-template.yaml"

on_path() {
    local dir
    for dir in "$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')" \
        "$(python3 -m site --user-base 2>/dev/null)/bin"; do
        if [[ -d "$dir" && ":$PATH:" != *":$dir:"* ]]; then
            PATH="$PATH:$dir"
        fi
    done
    if command -v pyenv >/dev/null 2>&1; then
        pyenv rehash >/dev/null 2>&1 || true
    fi
    hash -r
}

on_path
missing=()
command -v cfn-lint >/dev/null 2>&1 || missing+=(cfn-lint)
command -v sam >/dev/null 2>&1 || missing+=(aws-sam-cli)
if ((${#missing[@]})); then
    echo "validate-template: installing ${missing[*]}" >&2
    python3 -m pip install --quiet --disable-pip-version-check "${missing[@]}"
    on_path
fi

export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
export AWS_REGION="${AWS_REGION:-$AWS_DEFAULT_REGION}"
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}"
export AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"
export SAM_CLI_TELEMETRY=0

cd "$root"
echo "validate-template: $(cfn-lint --version)" >&2
cfn-lint sam-template.yaml
echo "validate-template: cfn-lint passed" >&2
sam validate --lint --template "$template"
echo "validate-template: sam validate --lint passed" >&2

# Each choice of ApiAuth on its own: cfn-lint with the parameter set, and
# `sam validate --lint` (which takes no parameter values) on a copy of the
# template whose ApiAuth defaults to that choice. The copy sits next to the
# template, so relative paths (CodeUri) mean the same; it is removed on exit.
grep -q '^  ApiAuth:$' sam-template.yaml || {
    echo "validate-template: no ApiAuth parameter in sam-template.yaml" >&2
    exit 1
}
variant="$root/.sam-template.validate.yaml"
trap 'rm -f "$variant"' EXIT
for choice in IAM Token; do
    cfn-lint --parameters "ApiAuth=$choice" DataBucketName=validate-bucket -- sam-template.yaml
    echo "validate-template: cfn-lint passed with ApiAuth=$choice" >&2
    awk -v choice="$choice" '
        /^  [A-Za-z]+:$/ { in_auth = ($1 == "ApiAuth:") }
        in_auth && /^    Default: / { print "    Default: " choice; next }
        { print }
    ' sam-template.yaml >"$variant"
    grep -A2 '^  ApiAuth:$' "$variant" | grep -q "Default: $choice\$" || {
        echo "validate-template: could not make ApiAuth default to $choice" >&2
        exit 1
    }
    sam validate --lint --template "$variant" >/dev/null
    echo "validate-template: sam validate --lint passed with ApiAuth=$choice" >&2
done
