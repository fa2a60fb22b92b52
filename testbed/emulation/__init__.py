"""The emulation executor: real ranks under node managers, the shim, memory limits."""
