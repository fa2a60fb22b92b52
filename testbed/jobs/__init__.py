"""The synthetic BSP job and its memory-walk kernel."""
