"""Tiny transformers models built from configs with random weights and a locally trained
tokenizer, saved with save_pretrained, so tests load them through the real Auto* path."""
