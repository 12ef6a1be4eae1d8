"""One module per content type libxmtp v1.10.0 sends: its value class and its codec."""
