"""GPUs of a partition, as its configuration declares them."""


def gpu_arch(partition):
    for dev in partition.devices:
        if dev.type == 'gpu' and dev.arch:
            return dev.arch

    return ''


def gpu_count(partition):
    return sum(dev.num_devices for dev in partition.devices
               if dev.type == 'gpu')
