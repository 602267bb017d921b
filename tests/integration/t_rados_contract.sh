# The cold backend contract (tests/unit/test_cold_contract.c) against the
# rados backend on the Ceph group's cluster: the same binary and tests as
# the posix run of the unit group, given "rados". It writes its objects in
# a namespace of its own and removes them; it adds one cephx user for the
# unreadable-file case and removes it.
: "${CEPH_CONF:?run under tests/ceph/run-test.sh (CEPH_CONF is not set)}"
: "${CEPH_POOL:?run under tests/ceph/run-test.sh (CEPH_POOL is not set)}"
# the daemons' own keyrings must win (see tests/ceph/README.md)
unset CEPH_KEYRING CEPH_ARGS
O=${1:?usage: t_rados_contract.sh BUILD}
exec "$O/tests/test_cold_contract" rados
