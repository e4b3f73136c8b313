"""Starting a stream's relay (SPEC §2.6, §12, §16): the one way a handler answers with a stream.

The upstream's stream has been opened up to its first event (``shell.stream.open_stream``); what
is left is the same for every surface: the count's end handed to the relay (``meter``), the relay
built (the provider key it must never pass on, the stall rule, the routed-via label and request id
it names when the stream fails), its loop started (in JavaScript, ``shell/piped.mjs`` or
``shell/paced.mjs``) and given to ``waitUntil`` (it outlives the handler: the answer's body is fed
while the caller reads it), and the answer: 200, the stream's media type, fresh headers, never
the upstream's.

Without a translator and without rescue, a chat stream is passed through as it came
(``stream.Relay``); otherwise it is relayed batch by batch through the translator
(``translation.TranslatedRelay``); with rescue on, a chat stream is relayed that way too, through
``WholeEvents``, event by whole event, so that a cut leaves no half event before the rescue's
chunks.
"""

from __future__ import annotations

from gateway import meter
from gateway.answers import stream_headers
from gateway.call import Call
from gateway.core.config import Config
from gateway.core.outcome import Served
from gateway.core.pacing import Pacing
from gateway.shell.http import JsResponse, respond
from gateway.shell.rescue import Rescuer
from gateway.shell.stream import OpenedStream, Relay
from gateway.shell.translation import TranslatedRelay
from gateway.surfaces.contract import StreamTranslator
from gateway.surfaces.whole_events import WholeEvents
from gateway.wire import headers as h

__all__ = ["relay_stream"]


async def relay_stream(
    call: Call,
    config: Config,
    served: Served,
    headers: dict[str, str],
    translator: StreamTranslator | None = None,
    rescue: Rescuer | None = None,
) -> JsResponse:
    """The answer to ``call`` that relays ``served``'s opened stream: translated by ``translator``
    (None: passed through as OpenAI chat SSE), finished by ``rescue`` if it breaks (None: rescue
    is off for it); ``headers``: the routing headers (``X-Routed-Via``, ``X-Request-Id``, …)."""
    opened = served.handle
    assert isinstance(opened, OpenedStream)  # the caller relays only an opened stream
    stall_ms = config.settings.stream_stall_ms
    label, request_id = headers[h.ROUTED_VIA], headers[h.REQUEST_ID]
    on_end = meter.relay_end(call, opened.head)
    if translator is None and rescue is None:
        readable, done = await Relay(opened, stall_ms, label, request_id, on_end).start()
        call.ctx.waitUntil(done)
        media_type = WholeEvents.media_type
    else:
        translator = translator or WholeEvents()
        key = served.candidate.key
        secret = config.key_memo.plain(key) if key is not None else None
        pacing = Pacing(config.settings.stream_pacing)
        translated = TranslatedRelay(opened, stall_ms, label, translator, secret, request_id, on_end, rescue, pacing)
        call.ctx.waitUntil(await translated.start())
        readable, media_type = translated.readable, translator.media_type
    meter.relayed(call)
    return respond(readable, 200, stream_headers(media_type, headers))
