# Shared by hack/control-plane.sh, hack/node.sh and hack/image.sh (source it).

# free_ports N: N distinct free loopback TCP ports (all bound at once, then released).
free_ports() {
  perl -MIO::Socket::INET -e 'my @s = map { IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1:0", ReuseAddr => 1) or die "bind: $!" } 1..$ARGV[0]; print join(" ", map { $_->sockport } @s), "\n"' "$1"
}

# apt_install PACKAGE...: install Debian packages quietly; the package lists are
# updated only when the first attempt fails (a fresh machine has none). sudo when not root.
apt_install() {
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  command -v apt-get >/dev/null 2>&1 || { echo "apt-get not found: install $* yourself" >&2; return 1; }
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1 ||
    { $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null; }
}
