#!/bin/sh
# Installs brsync from this folder (the tarball scripts/package makes), for
# distributions without its Debian packages. Programs built with static Swift
# runtimes: they need libc, libstdc++, libsqlite3 and libssl (brsyncd also
# libpq and libqrencode; the picker and the settings window GTK 4).
#
#   ./install.sh --user     brsync for you: ~/.local/bin, its manual page,
#                           completions, the menu entry, the systemd user units
#                           (not enabled: 'systemctl --user enable --now
#                           brsync-watch.service' starts live sync)
#   ./install.sh --system   the same for every user under /usr/local (as root),
#                           and the server: /usr/local/bin/brsyncd, its unit in
#                           /etc/systemd/system (not enabled), and
#                           /etc/brsyncd/brsyncd.env unless one is there
#
# Run it again to update; replicas, keys, the store and the configuration are
# never touched.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
case "${1:-}" in
  --user)
    prefix="$HOME/.local"
    data="${XDG_DATA_HOME:-$HOME/.local/share}"
    fish="${XDG_CONFIG_HOME:-$HOME/.config}/fish/completions"
    zsh="$data/zsh/site-functions"
    units="$data/systemd/user"
    server=no
    ;;
  --system)
    [ "$(id -u)" = 0 ] || { echo "install.sh: --system installs for every user: run it as root" >&2; exit 2; }
    prefix=/usr/local
    data=/usr/local/share
    fish=/usr/local/share/fish/vendor_completions.d
    zsh=/usr/local/share/zsh/site-functions
    units=/etc/systemd/user
    server=yes
    ;;
  -h | --help)
    sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "install.sh: say --user or --system (see --help)" >&2
    exit 2
    ;;
esac

# put FILE MODE DIRECTORY [NAME]: a copy, with the programs' folder the files name made this install's.
put() {
  mkdir -p "$3"
  sed "s|/usr/bin/|$prefix/bin/|g" "$1" >"$3/${4:-$(basename "$1")}"
  chmod "$2" "$3/${4:-$(basename "$1")}"
}

mkdir -p "$prefix/bin" "$data/man/man1" "$data/bash-completion/completions"
for program in brsync brsync-sync brsync-picker brsync-settings; do
  install -m 755 "$here/usr/bin/$program" "$prefix/bin/$program"
done
commands="brsync"
[ "$server" = yes ] && commands="brsync brsyncd" && install -m 755 "$here/usr/bin/brsyncd" "$prefix/bin/brsyncd"
for command in $commands; do
  install -m 644 "$here/usr/share/man/man1/$command.1.gz" "$data/man/man1/"
  install -m 644 "$here/usr/share/bash-completion/completions/$command" "$data/bash-completion/completions/"
  mkdir -p "$zsh" "$fish"
  install -m 644 "$here/usr/share/zsh/vendor-completions/_$command" "$zsh/"
  install -m 644 "$here/usr/share/fish/vendor_completions.d/$command.fish" "$fish/"
done
put "$here/usr/share/applications/brsync-settings.desktop" 644 "$data/applications"
for unit in brsync-sync.service brsync-sync.timer brsync-watch.service; do
  put "$here/usr/lib/systemd/user/$unit" 644 "$units"
done
if [ "$server" = yes ]; then
  put "$here/usr/lib/systemd/system/brsyncd.service" 644 /etc/systemd/system
  if [ ! -e /etc/brsyncd/brsyncd.env ]; then
    install -d -m 755 /etc/brsyncd
    install -m 644 "$here/etc/brsyncd/brsyncd.env" /etc/brsyncd/brsyncd.env
  fi
  echo "install.sh: brsyncd is installed and not started; Deploy/OPERATIONS.md (or the brsyncd package's message) says what it needs first"
fi
echo "install.sh: installed brsync in $prefix/bin (manual page, completions, menu entry, user units in $units, not enabled)"
case ":$PATH:" in *":$prefix/bin:"*) ;; *) echo "install.sh: note: $prefix/bin is not on PATH" ;; esac
