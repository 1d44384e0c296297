"""A custom metric module that must never be imported by a worker reading a request's criteria."""

raise AssertionError("imported from a request's criteria")
