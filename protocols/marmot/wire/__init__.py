"""Marmot's wire: Nostr events, their encryption layers and the event kinds Marmot publishes.

Everything here is pure (bytes and dicts in, bytes and dicts out) and knows
nothing of the core: the plugin's handlers and commands use it to read and
write what relays carry.
"""
