"""The libvirt driver (QEMU/KVM, LXC, Parallels).

``host`` holds the connection; ``domcaps`` and ``hostcaps`` parse what libvirt says;
``tables`` is what the driver knows without asking; ``discovery`` turns it all
into traits; ``driver`` is the ``ComputeDriver``.
"""
