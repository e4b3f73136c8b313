"""What every handler is served by: the caller's token and limits (``auth``, ``limits``), the body
(``body``), routing through the fallback loop (``routing``), the model catalog (``catalog``), the
answers to forwarded and translated requests (``forward``, ``surface``), the one way a stream's
relay is started (``relay``) and its rescue (``rescue``)."""
