"""Client protocols in front of the one router (SPEC §12): pure translators, no I/O, no ``js``.

Each surface module (``anthropic``, ``responses``, ``gemini``, ``ollama``) is data plus pure
functions: its request → an OpenAI chat body, an OpenAI answer (``chat.Answer``) → its answer, a
stream translator (``contract.StreamTranslator``) and its error shape. ``chat`` reads what the
upstream answered; ``contract`` holds what every surface shares. The route driver
(``gateway.serving.surface``) runs any of them through the same chain and fallback loop.
"""
