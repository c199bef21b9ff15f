#!/usr/bin/env python3
"""A network's latency for the ssh benchmarks of bench/run.sh, which this kernel cannot add
(it has no netem for `tc qdisc … netem delay`): a TCP relay that delivers every byte a fixed time
after it came, each way, in order and at any rate (a delay, not a bandwidth limit).

    delay_relay.py TARGET_PORT DELAY_MS PID

Listens on 127.0.0.1 on a free port, which it prints first; relays each connection to
127.0.0.1:TARGET_PORT; runs until SIGTERM or until process PID (the benchmark's shell) is gone."""

import asyncio
import os
import signal
import sys


async def relay(reader, writer, delay):
    """Bytes from `reader` to `writer`, each chunk `delay` s after it came; then the end."""
    loop = asyncio.get_running_loop()
    chunks = asyncio.Queue()

    async def deliver():
        while True:
            due, data = await chunks.get()
            if due > loop.time():
                await asyncio.sleep(due - loop.time())
            if not data:
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()

    delivering = asyncio.create_task(deliver())
    try:
        while True:
            data = await reader.read(1 << 16)
            chunks.put_nowait((loop.time() + delay, data))
            if not data:
                break
        await delivering
    except ConnectionError:
        delivering.cancel()


async def serve(target_port, delay, owner):
    async def connected(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target_port)
        except OSError:
            client_writer.close()
            return
        try:
            await asyncio.gather(relay(client_reader, server_writer, delay),
                                 relay(server_reader, client_writer, delay))
        except asyncio.CancelledError:
            pass  # the relay is stopping
        finally:
            client_writer.close()
            server_writer.close()

    server = await asyncio.start_server(connected, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    while not stopping.is_set() and os.path.exists("/proc/%d" % owner):
        try:
            await asyncio.wait_for(stopping.wait(), 0.5)
        except asyncio.TimeoutError:
            pass
    server.close()


def main():
    target_port, delay_ms, owner = (int(arg) for arg in sys.argv[1:4])
    asyncio.run(serve(target_port, delay_ms / 1000, owner))


if __name__ == "__main__":
    main()
