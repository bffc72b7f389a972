#!/usr/bin/env bash
# The pull bench for another x86-64 Linux machine that has no OpenSSH server or rsync and can
# fetch nothing (BENCHMARKS.md's 16-core rows ran so): builds `cargo bench --bench pull` here and
# copies it into KIT with this machine's sshd, sftp-server, ssh, scp, ssh-keygen and rsync and
# the libraries they load (glibc's own left out: the other machine's, if as new, serves). KIT's
# run.sh, run there as root, installs them where the bench looks (/usr/sbin/sshd,
# /usr/lib/openssh/sftp-server, OpenSSH's client first on PATH and at /usr/bin/ssh, which scp
# starts), the libraries through /etc/ld.so.conf.d, then runs the bench with the PULL_BENCH_*
# variables it is given. Usage: scripts/pull-bench-kit.sh KIT; there: PULL_BENCH=large KIT/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
kit=${1:?usage: scripts/pull-bench-kit.sh KIT}
mkdir -p "$kit/bin" "$kit/lib"
bench=$(cargo bench --bench pull --no-run --message-format=json 2>/dev/null |
  sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)
[ -x "$bench" ] || { echo "the pull bench did not build" >&2; exit 1; }
cp "$bench" "$kit/pull-bench"
for tool in /usr/sbin/sshd /usr/lib/openssh/sftp-server "$(command -v ssh)" "$(command -v scp)" \
  "$(command -v ssh-keygen)" "$(command -v rsync)"; do
  cp "$tool" "$kit/bin/"
  ldd "$tool" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
    case $(basename "$lib") in
      libc.so.*|libm.so.*|libresolv.so.*|libpthread.so.*|libdl.so.*|librt.so.*) ;;
      *) cp -L "$lib" "$kit/lib/" ;;
    esac
  done
done
cat > "$kit/run.sh" <<'EOF'
#!/usr/bin/env bash
# Installs the kit's OpenSSH and rsync (see scripts/pull-bench-kit.sh), then runs the bench.
set -euo pipefail
kit=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" = 0 ] || { echo "run as root: it installs sshd" >&2; exit 2; }
mkdir -p /opt/rigwatch-kit-libs /usr/lib/openssh /run/sshd /usr/local/bin
cp "$kit"/lib/* /opt/rigwatch-kit-libs/
echo /opt/rigwatch-kit-libs > /etc/ld.so.conf.d/zz-rigwatch-kit.conf && ldconfig
cp -f "$kit/bin/sshd" /usr/sbin/sshd
cp -f "$kit/bin/sftp-server" /usr/lib/openssh/sftp-server
for b in ssh scp ssh-keygen rsync; do cp -f "$kit/bin/$b" "/usr/local/bin/$b"; done
[ -e /usr/bin/ssh ] || cp "$kit/bin/ssh" /usr/bin/ssh
id sshd >/dev/null 2>&1 || useradd -r -M -d /run/sshd -s /usr/sbin/nologin sshd
# sshd without PAM refuses a locked account ("!" in its shadow entry).
if grep -q '^root:!' /etc/shadow; then usermod -p '*' root; fi
cd /tmp && exec "$kit/pull-bench" --bench
EOF
chmod +x "$kit/run.sh"
du -sh "$kit"
