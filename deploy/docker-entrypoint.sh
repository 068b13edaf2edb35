#!/bin/sh
# Secrets from files: for each SWITCHBOARD_<NAME>_FILE set (compose and Kubernetes
# secrets are files), export SWITCHBOARD_<NAME> with the file's contents, so a secret
# never has to sit in the environment of the container's definition. Then exec the
# command, so it is the process tini signals.
set -eu

for assignment in $(env | grep -o '^SWITCHBOARD_[A-Z0-9_]*_FILE=' || true); do
    file_var=${assignment%=}
    var=${file_var%_FILE}
    eval "path=\${$file_var}"
    if eval "[ -n \"\${$var+set}\" ]"; then
        echo "docker-entrypoint: both $var and $file_var are set; set only one" >&2
        exit 2
    fi
    if [ ! -r "$path" ]; then
        echo "docker-entrypoint: $file_var names $path, which cannot be read" >&2
        exit 2
    fi
    # $(cat) drops the trailing newline an editor leaves at the end of the file.
    value=$(cat "$path")
    export "$var=$value"
    unset "$file_var"
done

exec "$@"
