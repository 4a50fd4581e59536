"""An SMS centre for the SMPP tests, the fault run and the benchmark: PyPI's smpp34 server
(its Rust core frames, windows and answers enquire_link), with what a test needs around it.

    smsc_simulator.py serve PORT DIRECTORY
        Serves until standard input closes; prints "ready" once listening. Each accepted
        submit_sm is appended to DIRECTORY/submits.jsonl ({"messageId", "destination",
        "source", "dataCoding", "esmClass", "registeredDelivery", "message": hex}); with
        registered_delivery a deliver_sm receipt follows (stat from DIRECTORY/receipt,
        default DELIVRD), and its answer is appended to DIRECTORY/receipts.jsonl. A number in
        DIRECTORY/throttle answers that many submit_sm with ESME_RTHROTTLED (0x58). Message ids
        carry a prefix of the run, so a restarted simulator never repeats one.
    smsc_simulator.py ceiling PORT COUNT WINDOW
        The simulator's own submit_sm ceiling: COUNT submit_sm from the smpp34 client with
        WINDOW outstanding, printed as "ceiling: N/s".
"""
import asyncio
import json
import os
import secrets
import sys
import time

import smpp34

STATES = {"DELIVRD": 2, "EXPIRED": 3, "DELETED": 4, "UNDELIV": 5, "ACCEPTD": 6, "REJECTD": 8}


def read(path, default=None):
    try:
        with open(path) as f:
            return f.read().strip()
    except FileNotFoundError:
        return default


async def receipt(esme, event, message_id, directory):
    stat = read(os.path.join(directory, "receipt"), "DELIVRD")
    text = f"id:{message_id} sub:001 dlvrd:{'001' if stat == 'DELIVRD' else '000'} submit date:2612061200 " \
           f"done date:2612061200 stat:{stat} err:000 text:"
    try:
        answer = await esme.deliver_sm(
            event.source_addr, text.encode(), source_addr=event.destination_addr, esm_class=0x04,
            tlvs=[smpp34.Tlv(0x001E, message_id.encode() + b"\0"), smpp34.Tlv(0x0427, bytes([STATES.get(stat, 5)]))])
        status = answer.command_status
    except Exception as error:  # the session went away before the receipt
        status = f"lost: {error}"
    with open(os.path.join(directory, "receipts.jsonl"), "a") as f:
        f.write(json.dumps({"messageId": message_id, "status": status}) + "\n")


async def serve(port, directory):
    server = smpp34.Server("127.0.0.1", port, system_id="simsc")
    await server.start()
    print("ready", flush=True)
    loop = asyncio.get_running_loop()
    stopped = loop.run_in_executor(None, sys.stdin.read)
    run = secrets.token_hex(3)
    count = 0
    esmes = {}
    tasks = set()
    while True:
        step = asyncio.ensure_future(server.next())
        done, _ = await asyncio.wait({step, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if stopped in done:
            step.cancel()
            await server.stop()
            return
        event = step.result()
        if isinstance(event, smpp34.Esme):
            esmes[event.session_id] = event
        elif isinstance(event, smpp34.Unbound):
            esmes.pop(event.session_id, None)
        elif isinstance(event, smpp34.SubmitSmEvent):
            throttle = os.path.join(directory, "throttle")
            left = int(read(throttle, "0") or 0)
            if left > 0:
                with open(throttle, "w") as f:
                    f.write(str(left - 1))
                event.reject(0x58)
                continue
            count += 1
            message_id = f"{run}{count:06d}"
            with open(os.path.join(directory, "submits.jsonl"), "a") as f:
                f.write(json.dumps({
                    "messageId": message_id, "destination": event.destination_addr, "source": event.source_addr,
                    "dataCoding": event.data_coding, "esmClass": event.esm_class,
                    "registeredDelivery": event.registered_delivery, "message": event.short_message.hex()}) + "\n")
            event.accept(message_id)
            esme = esmes.get(event.session_id)
            if event.registered_delivery & 1 and esme is not None:
                task = asyncio.ensure_future(receipt(esme, event, message_id, directory))
                tasks.add(task)
                task.add_done_callback(tasks.discard)


async def ceiling(port, count, window):
    client = smpp34.Client("127.0.0.1", port, "ceiling", "ceiling", bind_type="TRX", window_size=window)
    session = await client.connect()
    semaphore = asyncio.Semaphore(window)

    async def one(index):
        async with semaphore:
            await session.submit_sm("01000000000", f"ceiling {index}".encode("utf-16-be"), source_addr="BENCH",
                                    data_coding=8)

    started = time.monotonic()
    await asyncio.gather(*(one(i) for i in range(count)))
    elapsed = time.monotonic() - started
    print(f"ceiling: {count / elapsed:.0f}/s", flush=True)
    await session.unbind()
    os._exit(0)  # the client's teardown is not needed (and has crashed at exit)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "serve":
        asyncio.run(serve(int(sys.argv[2]), sys.argv[3]))
    elif len(sys.argv) == 5 and sys.argv[1] == "ceiling":
        asyncio.run(ceiling(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
