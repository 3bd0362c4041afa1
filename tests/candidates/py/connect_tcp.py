# BAD CANDIDATE for coll_allreduce (CPU device, Python), a pkb sandbox test.
# Expected verdict: integrity_violation
#
# Opens a TCP socket in pkb_init (to send the inputs somewhere). Python candidates keep
# the network rule: the socket is denied and reported.
import socket


def pkb_init(ctx, inputs, outputs):
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    except OSError:
        pass


def pkb_run(ctx, inputs, outputs):
    return 0
