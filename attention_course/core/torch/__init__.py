"""What every chapter's PyTorch code stands on: how layers take their inputs and the training loop."""
