"""The hack regression suite: adversarial candidates that must be caught, honest ones that must pass."""
