"""The model side: the only importer of anthropic. The client (streaming, retries, fallback), API message
shapes, the reply stream, each model's facts (window, prices, thinking), the model switch, the API's web
tools, tool schemas in the structured-outputs subset, the rate gate and the system prompt. Imports config/,
trust/ and core/."""
