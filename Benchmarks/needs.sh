# Sourced by the benchmarks (from the repository's root).
# `needs HINT TOOL...`: stops (exit 2) saying how to install a tool that is
# neither on PATH nor in /usr/sbin. `tool_path TOOL`: where it is.
tool_path() { command -v "$1" 2>/dev/null || { [ -x "/usr/sbin/$1" ] && echo "/usr/sbin/$1"; }; }
needs() {
  local hint="$1" tool
  shift
  for tool in "$@"; do tool_path "$tool" >/dev/null || { echo "needs $tool: $hint" >&2; exit 2; }; done
}
