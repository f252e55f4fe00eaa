"""``moorage run``: play a described cloud's workload under each scheduling
configuration and report what the prefilters change."""
