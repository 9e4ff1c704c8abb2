"""Leaf utilities shared by every layer: the error hierarchy and the injectable clock."""
