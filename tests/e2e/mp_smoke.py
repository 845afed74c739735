"""Python's multiprocessing, each start method: a Pool, a Queue between
processes, a Lock and a shared Value, a ProcessPoolExecutor, and
shared_memory. Prints "METHOD ok" per method; any failure is an exception.

forkserver passes its children's descriptors over an AF_UNIX socket
(SCM_RIGHTS), Lock and Value are POSIX semaphores and shared files in
/dev/shm, shared_memory is shm_open; spawn re-runs this file by its path.

usage: python3 mp_smoke.py [METHOD...]   (default: fork spawn forkserver)
"""
import multiprocessing as mp, sys, concurrent.futures as cf
from multiprocessing import shared_memory

def sq(x): return x * x

def bump(v, lock, n):
    for _ in range(n):
        with lock:
            v.value += 1

def produce(q, n):
    for i in range(n): q.put(i)
    q.put(None)

def run(method):
    ctx = mp.get_context(method)
    with ctx.Pool(3) as p:
        assert p.map(sq, range(50)) == [i * i for i in range(50)]
    q = ctx.Queue()
    pr = ctx.Process(target=produce, args=(q, 100)); pr.start()
    got = []
    while (x := q.get()) is not None: got.append(x)
    pr.join(); assert got == list(range(100)) and pr.exitcode == 0
    lock = ctx.Lock(); v = ctx.Value('i', 0)
    ps = [ctx.Process(target=bump, args=(v, lock, 200)) for _ in range(3)]
    for p_ in ps: p_.start()
    for p_ in ps: p_.join()
    assert v.value == 600, v.value
    with cf.ProcessPoolExecutor(2, mp_context=ctx) as ex:
        assert list(ex.map(sq, range(20))) == [i * i for i in range(20)]
    shm = shared_memory.SharedMemory(create=True, size=64)
    try:
        shm.buf[:5] = b'hello'
        other = shared_memory.SharedMemory(name=shm.name)
        assert bytes(other.buf[:5]) == b'hello'; other.close()
    finally:
        shm.close(); shm.unlink()
    print(method, 'ok', flush=True)

if __name__ == '__main__':
    for m in sys.argv[1:] or ['fork', 'spawn', 'forkserver']:
        run(m)
