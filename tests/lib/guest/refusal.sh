# shellcheck shell=sh
# The one "was it the kernel refusing a write to a mounted device?" test of
# the mountsafe tests, used by the scenario runner, the scenarios and the
# system stage's report (busybox ash and bash alike).
#
# A refusal is the kernel's EBUSY reaching the user ("Device or resource
# busy", "... is busy", mount's "already mounted or mount point busy"),
# the kernel's "Can't open blockdev" (util-linux 2.42's new mount API passes
# it on), or our tools' explanation naming bdev_allow_write_mounted.
MS_REFUSAL_RE="busy|bdev_allow_write_mounted|can't open blockdev"

# is_refusal FILE...: true when the output in FILE (or stdin) shows it.
is_refusal() { grep -q -i -E "$MS_REFUSAL_RE" "$@"; }
