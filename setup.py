"""ament_python build of tt_depth_ros (also a plain pip-installable package)."""
from glob import glob

from setuptools import find_packages, setup

PACKAGE = 'tt_depth_ros'

setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(include=[PACKAGE, PACKAGE + '.*']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        ('share/' + PACKAGE, ['package.xml']),
        ('share/' + PACKAGE + '/launch', glob('launch/*.py')),
        ('share/' + PACKAGE + '/config', glob('config/*.yaml') + glob('config/*.xml')),
        ('share/' + PACKAGE + '/rviz', glob('rviz/*.rviz')),
        ('share/' + PACKAGE + '/foxglove', glob('foxglove/*.json')),
    ],
    install_requires=['setuptools', 'tqdm'],   # tqdm: tt-depth-batch's progress bar
    # tt-depth-batch --ray; plain ray (no dashboard deps), the pin of requirements/ray.txt
    extras_require={'ray': ['ray==2.60.0'],
                    'litert': ['litert-torch==0.10.0', 'ai-edge-litert==2.3.0']},
    zip_safe=True,
    maintainer='tt_depth_ros developers',
    maintainer_email='dev@tt-depth-ros.invalid',
    description='Metric depth and two-view reconstruction ROS 2 nodes (DA3 metric, DUSt3R).',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'depth_node = tt_depth_ros.ros.entry_points:depth_node',
            'pair_node = tt_depth_ros.ros.entry_points:pair_node',
            'tt-depth = tt_depth_ros.tools.cli.main:main',
            'tt-depth-export = tt_depth_ros.tools.cli.export:main',
            'tt-depth-sample-bag = tt_depth_ros.tools.bag.sample:main',
            'tt-depth-replay = tt_depth_ros.tools.bag.replay:main',
            'tt-depth-record = tt_depth_ros.tools.bag.record:main',
            'tt-depth-batch = tt_depth_ros.tools.batch.run:main',
            'tt-depth-benchmark = tt_depth_ros.tools.bench.benchmark:main',
            'tt-depth-demo = tt_depth_ros.tools.demo.run:main',
        ],
    },
)
