# Shared by hack/control-plane.sh, hack/node.sh and hack/image.sh (source it).

# free_ports N: N distinct free loopback TCP ports (all bound at once, then released),
# drawn at random from BELOW the kernel's ephemeral range (ip_local_port_range, 32768-60999
# by default). A port the kernel hands out itself (to a `bind(:0)`, or as the source port
# of any outgoing connection) comes from that range, so an ephemeral port found free and
# released here could be taken before its component binds it: a kube-controller-manager
# of the demo failed with "bind: address already in use" while two soaks ran beside it.
# Below the range only another caller of this function can draw the same port, 1 in
# about 20,000 per port.
free_ports() {
  perl -MIO::Socket::INET -e '
    my ($n) = @ARGV;
    my $low = 32768;
    if (open(my $f, "<", "/proc/sys/net/ipv4/ip_local_port_range")) { ($low) = split(" ", <$f>); }
    my $from = 10000;
    $from = 1024 if $low - $from < 1000;
    my (@s, %seen);
    for (my $tries = 0; @s < $n; $tries++) {
      die "no free port below $low after $tries tries\n" if $tries > 10000;
      my $p = $from + int(rand($low - $from));
      next if $seen{$p}++;
      my $sock = IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1:$p") or next;
      push @s, $sock;
    }
    print join(" ", map { $_->sockport } @s), "\n"' "$1"
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
