# The counter listing of an installed rocprofv3, answered by rtl-pmc (see avail.py).
