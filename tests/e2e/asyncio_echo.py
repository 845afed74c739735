"""An asyncio echo server and its clients in one event loop (the epoll
selector): TCP on 127.0.0.1 and an abstract AF_UNIX name, 20 concurrent
clients each, every line checked. Prints a summary that is the same
natively and under flatux."""
import asyncio
import os
import selectors
import sys

CLIENTS = 20
LINES = 50


async def handle(reader, writer):
    while line := await reader.readline():
        writer.write(line)
        await writer.drain()
    writer.close()
    await writer.wait_closed()


async def client(connect, n):
    reader, writer = await connect()
    ok = 0
    for i in range(LINES):
        msg = f"client {n} line {i} {'x' * (i * 13 % 200)}\n".encode()
        writer.write(msg)
        await writer.drain()
        if await reader.readline() == msg:
            ok += 1
    writer.close()
    await writer.wait_closed()
    return ok


async def run(kind, start, connect):
    server = await start()
    async with server:
        oks = await asyncio.gather(*(client(connect(server), n) for n in range(CLIENTS)))
    print(f"{kind}: {sum(oks)} of {CLIENTS * LINES} lines echoed")
    return sum(oks) == CLIENTS * LINES


async def main():
    tcp = await run("tcp", lambda: asyncio.start_server(handle, "127.0.0.1", 0),
                    lambda s: (lambda: asyncio.open_connection(
                        "127.0.0.1", s.sockets[0].getsockname()[1])))
    # An abstract name: nothing to create or remove in a folder.
    path = f"\0flatux-asyncio-{os.getpid()}"
    unix = await run("unix", lambda: asyncio.start_unix_server(handle, path),
                     lambda s: (lambda: asyncio.open_unix_connection(path)))
    return tcp and unix


loop = asyncio.SelectorEventLoop(selectors.EpollSelector())
ok = loop.run_until_complete(main())
loop.close()
print("selector:", type(selectors.EpollSelector()).__name__)
sys.exit(0 if ok else 1)
